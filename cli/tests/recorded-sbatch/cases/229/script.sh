#!/bin/bash
#PBS -l walltime=10:00,mem=2gb
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
