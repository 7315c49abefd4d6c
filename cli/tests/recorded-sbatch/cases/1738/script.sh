#!/bin/bash
#PBS -l mem=2gb
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
