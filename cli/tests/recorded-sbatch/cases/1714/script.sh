#!/bin/bash
#SBATCH --error %x.err
#SBATCH --mem 0
#PBS -l mem=2gb
cd $SLURM_SUBMIT_DIR
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
